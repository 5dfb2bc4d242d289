// The Flex Consumption plan and the function app: Python on Linux, deployed from a blob container, keyless.
param planName string
param name string
param location string
param tags object = {}
@description('azd service this app hosts (azure.yaml `services`).')
param serviceName string = 'api'

@description('User-assigned identity: its resource id and client id.')
param identityId string
param identityClientId string

param storageAccountName string
param deploymentContainerName string
param applicationInsightsName string

@description('functionAppConfig.runtime.version; Flex Consumption supports Python 3.10 to 3.13.')
param pythonVersion string
param instanceMemoryMB int
param maximumInstanceCount int
@description('Zone-redundant plan: instances spread over the region\'s availability zones, and the platform keeps at least two always-ready instances per function group, billed as such.')
param zoneRedundant bool = false
param httpPerInstanceConcurrency int
param alwaysReadyInstanceCount int

@description('Subnet delegated to Microsoft.App/environments for VNet integration; empty for none.')
param subnetId string = ''

@description('refreshOnPublish: the queue service of the refresh queue\'s own account (app/refresh-queue.bicep), where the queue trigger reads; empty: the host uses no queue.')
param queueServiceUri string = ''

@description('The service\'s own settings (Forge__Documentation__*), one object built in main.bicep.')
param appSettings object

@description('Log Analytics workspace the app\'s resource logs (FunctionAppLogs) and platform metrics go to.')
param logAnalyticsWorkspaceId string

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true
    zoneRedundant: zoneRedundant
  }
}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  tags: union(tags, { 'azd-service-name': serviceName })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    keyVaultReferenceIdentity: identityId
    virtualNetworkSubnetId: empty(subnetId) ? null : subnetId
    // No ftpsState or any other property Flex Consumption rejects (tests/infra/flex_consumption_unsupported.txt):
    // FTP is off through the publishing-credentials policy below.
    siteConfig: {
      http20Enabled: true
      minTlsVersion: '1.2'
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
        alwaysReady: (alwaysReadyInstanceCount > 0) ? [{ name: 'http', instanceCount: alwaysReadyInstanceCount }] : []
        triggers: {
          http: {
            perInstanceConcurrency: httpPerInstanceConcurrency
          }
        }
      }
      runtime: {
        name: 'python'
        version: pythonVersion
      }
    }
  }
}

// Deployments authenticate with Entra ID; publishing user names and passwords are switched off.
resource ftpCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: site
  name: 'ftp'
  properties: {
    allow: false
  }
}

resource scmCredentials 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-04-01' = {
  parent: site
  name: 'scm'
  properties: {
    allow: false
  }
}

// The host's settings come last so the service's settings can never replace them. Identity-based
// AzureWebJobsStorage names each service's URI: blob in the host storage; queue, only when the queue trigger reads it
// (function_app.py's connection AzureWebJobsStorage), in the refresh queue's account, with the identity's role there.
resource settings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  properties: union(appSettings, {
    AzureWebJobsStorage__credential: 'managedidentity'
    AzureWebJobsStorage__clientId: identityClientId
    AzureWebJobsStorage__blobServiceUri: storage.properties.primaryEndpoints.blob
    APPLICATIONINSIGHTS_CONNECTION_STRING: applicationInsights.properties.ConnectionString
    APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
  }, empty(queueServiceUri) ? {} : {
    AzureWebJobsStorage__queueServiceUri: queueServiceUri
  })
}

// The host's and the functions' logs beside Application Insights' telemetry, and the platform's metrics.
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: site
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        category: 'FunctionAppLogs'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

output name string = site.name
output id string = site.id
output defaultHostName string = site.properties.defaultHostName
