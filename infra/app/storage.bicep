// The host's storage account: keyless (Entra ID only), holding the deployment package, the shared index cache and the
// Functions host's own blobs (its keys among them). Under private networking its public endpoint is off whatever else
// is deployed: refreshOnPublish's queue, which Event Grid must reach over a public endpoint, has an account of its own
// (app/refresh-queue.bicep).
param name string
param location string
param tags object = {}
@description('Blob container Flex Consumption deploys the app package from.')
param deploymentContainerName string
@description('Blob container of the shared index cache (Forge__Documentation__Cache__Container).')
param cacheContainerName string
@description('Reachable only through private endpoints when true: the public endpoint is off.')
param privateNetworking bool = false
@description('Zone-redundant storage (Standard_ZRS), what a zone-redundant Flex Consumption plan\'s host storage should be.')
param zoneRedundant bool = false
@description('Log Analytics workspace the blob service\'s resource logs go to.')
param logAnalyticsWorkspaceId string

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: zoneRedundant ? 'Standard_ZRS' : 'Standard_LRS'
  }
  properties: {
    accessTier: 'Hot'
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    dnsEndpointType: 'Standard'
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    // Without private networking the app (whose outbound addresses are the platform's, shared and changing) reaches the
    // account over its public endpoint, Entra ID-only: the firewall stays open. With it, the public endpoint is off.
    publicNetworkAccess: privateNetworking ? 'Disabled' : 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: privateNetworking ? 'Deny' : 'Allow'
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

// Created here so the app never needs the right to create containers.
resource cacheContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: cacheContainerName
  properties: {
    publicAccess: 'None'
  }
}

// Reads, writes and deletes of blobs (StorageBlobLogs): who touched the cache.
resource blobDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: blobService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        categoryGroup: 'allLogs'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

output name string = storage.name
output id string = storage.id
output blobEndpoint string = storage.properties.primaryEndpoints.blob
